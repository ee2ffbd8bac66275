"""Bridges to tools RAG engineers already use (MLflow); each imports its tool only when called."""
