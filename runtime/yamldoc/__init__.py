"""The YAML files runtime reads, under any station: their tree with positions, the fast
path for the common subset, and the schema mechanism each file kind is checked with.
"""
