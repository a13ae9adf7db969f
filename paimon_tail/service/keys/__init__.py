"""Where a key lives, as both sides compute it: Paimon's bucket hash (``binary_row.py`` for one key in plain
Python, ``bucket_hash.py`` for columns), the key's channel (Paimon's ``ChannelComputer``, ``routing.py``) and keys
parsed by the key columns' types (``parse.py``). The client routes with this package, the coordinator assigns
channels with it, and an executor checks ownership with it, so all three always agree.

Importing this package loads nothing heavy: the one-key command-line lookup runs on it without pyarrow.
"""
