"""Line sources: positioned text lines of a page (the PDF text layer; OCR over the pixels), the run
references that name them in a model's answer, and the anchor that puts them in a prompt."""
