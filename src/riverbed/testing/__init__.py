"""riverbed.testing"""
