"""Kernels: sessions and links (ZMQ, gateway), runs, and what kernel messages become as outputs."""
