"""surfaces"""
