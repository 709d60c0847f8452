"""Utilities every layer uses: atomic files, logging, progress lines, the TF-GAN import bridge.

The lowest package of the suite: it imports nothing from replication/, sngan/ or experiments/.
"""
