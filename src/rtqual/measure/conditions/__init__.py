"""Host conditions of a case: the kernel objects rtqual makes (objects.py), the journal of every change
(journal.py), `rtqual restore`'s undo of a bundle's journal (restore.py) and the applier (applier.py)."""
