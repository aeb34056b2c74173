"""tasks/vitaldb_ioh"""
