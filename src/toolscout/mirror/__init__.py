"""mirror"""
