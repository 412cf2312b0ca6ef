"""Files shipped with cwread: the static embedding model (`minilm-static/`) and the Ollama
Modelfiles (`modelfiles/`)."""
