"""A topic and where it lives: the durable record and its locks, holders, the repos of a
topic and how they are found from any checkout.
"""
