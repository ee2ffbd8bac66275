"""The package version, in a leaf module so that any layer can name it without importing the public API."""

__version__ = "0.4.0"
