"""HTTP serving: the OpenAI-compatible API, the Reader endpoint, the demo page and metrics (docs/serving.md).

Nothing is imported here: `jocr.serve.app.create_app` builds the app.
"""
