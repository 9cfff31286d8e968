"""The Streamlit layer shared by app.py and the pages: session state, URL sync, common widgets.

Nothing in the core (viz.*) imports this package.
"""
