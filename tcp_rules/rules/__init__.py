"""Rules: the typed rule model, resolution, static checks, semantics and library loading."""
