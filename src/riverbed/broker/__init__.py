"""riverbed.broker"""
