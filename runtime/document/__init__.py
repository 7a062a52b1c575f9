"""The document and its grammar: loading Markdown, the YAML tree, the closed grammar, the typed model, the catalog, validation."""
