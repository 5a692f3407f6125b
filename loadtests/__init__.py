"""Load tests: file formats (a registry), import and promotion, sweeps and the sweet spot, the
release gate, run diagnosis, and their pages, API and commands.

The file parsers in `loadtests.formats` import no Django; the math lives in `analysis`.
"""
