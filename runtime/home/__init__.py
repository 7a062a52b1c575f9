"""Runtime Home and what lives there: its layout, config, contexts, the Auth Engine, the provider registry."""
