"""The HTTP side of lance-namespace-adapter: it knows the REST protocol, not the catalogs."""
