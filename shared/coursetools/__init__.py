"""coursetools: the course authors' tools, beside the learner's package `rlvr` (which never imports them).

`python -m coursetools notebooks | site | messages | lint`: generate the student notebooks from the solutions and check
them, execute and render them, translate them (gettext catalogues per notebook), build the course website, keep
rlvr's own message catalogue in step, and lint what a learner reads. The modules, lowest first:
`repo` (where the files are), `nbfile` (the notebook format: markers, read / write, clean, student version),
`po` (gettext catalogues with Babel), `lint`, `execute` (run a notebook in a kernel), `translate`, `notebooks`,
`site`, `messages`, and `cli` (the dispatch). Their dependencies are the `[author]` extra (the site's: `[site]`).
"""
