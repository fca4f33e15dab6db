"""riverbed.protocol"""
