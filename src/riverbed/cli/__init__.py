"""riverbed.cli"""
