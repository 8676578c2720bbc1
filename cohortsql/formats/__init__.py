"""How results are laid out for people and files: their tables and words (`tables.py`), their files
(`files.py`) and the colours of their features (`colours.py`). Below `results/` and `report/`, so that
a result's own `.report()` reaches a surface that lies below it."""
