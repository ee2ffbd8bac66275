"""`--system PREFIX:module:attr`: the framework prefixes and the function each one builds with (a module of
its own so that systems.external reads them without importing the adapters, which import it)."""

PREFIXES = {"langchain": "from_langchain", "llamaindex": "from_llamaindex", "haystack": "from_haystack"}
