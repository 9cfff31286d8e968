"""A real trained transformer beside the toy: its tokens, attention, real KV cache and speed.

``viz.core.real.model`` loads the small GPT-2-configured model that ships in ``weights/`` (or any local
Hugging Face causal LM), prefills a prompt and decodes with the model's own ``DynamicCache``;
``viz.core.real.rules_match`` scores its heads against the toy's rules; ``viz.tools.real_bench`` measures it;
``python -m viz.tools.train`` rebuilds the shipped weights. Imports torch and transformers, never
streamlit or plotly. Importing this package does not import transformers; loading a model does.
"""
