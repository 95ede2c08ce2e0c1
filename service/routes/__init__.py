"""HTTP routes, one module per resource; each is thin: load, call the core, save, return."""
