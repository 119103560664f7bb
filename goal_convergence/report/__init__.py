"""`goal report`: one self-contained HTML page a goal (styles, script and SVG charts inline; no network needed
to view it), and an index page of a project's goals.

``chart`` lays out the SVG (pure geometry), ``view`` turns a goal into what the page shows, ``page`` renders
the Jinja2 templates under ``templates/`` and writes the files. Nothing here is imported by the hooks.
"""
