"""The transparency log: an append-only RFC 6962 Merkle tree of typed entries, with signed checkpoints.

Why: anyone holding an old signed checkpoint can prove that today's log extends it, and that a
result or release is in it, in O(log n) hashes (docs/transparency-log.md). The modules, by
responsibility: ``merkle`` (hashing, proofs, their verification), ``entries`` (the typed leaves
and their bytes), ``checkpoint`` (C2SP signed notes), ``store`` (the files on disk), ``audit``
(verifying a stored log and its key lifetimes), ``publisher`` (appending onto a verified log),
``publishing`` (what each publish checks and logs), ``reader`` (what the API serves), ``proofs``
(a verifier's checks of the API's answers), ``signer`` (the adapter to the publisher's key).
"""
