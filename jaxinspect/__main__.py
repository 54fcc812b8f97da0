"""Entry point for ``python -m jaxinspect``."""

from jaxinspect.entry import main

main()
