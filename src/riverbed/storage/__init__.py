"""riverbed.storage"""
