"""Page assembly: the one request builder, a model's answer resolved against its line source (references,
page furniture, tables of prose), post-processing to Markdown with grounding boxes."""
