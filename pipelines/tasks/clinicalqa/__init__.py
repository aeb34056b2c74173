"""tasks/clinicalqa"""
