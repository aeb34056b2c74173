"""datasets/clinicalqa"""
