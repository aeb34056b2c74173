"""datasets/vitaldb"""
