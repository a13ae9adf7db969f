"""An executor: started through ``entry.py``, runs its life (``runner.py``), joins a coordinator (``join_loop.py``,
one Join call ``session.py``), keeps what it holds (``holding.py``: per table ``state.py``, its buckets in stores,
``service/store/``) and answers ``Lookup`` (``servicer.py`` → ``lookups.py``: one ``Reading`` of ``views.py`` a
call, keys as values ``typed_keys.py`` or as Arrow ``arrow_keys.py``, ``refusals.py``). Imports run that way only:
entry → runner → servicer → lookups, never back."""
