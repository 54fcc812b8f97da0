"""Commands beyond ``stages``, one module each, registered by ``jaxinspect.cli``."""
