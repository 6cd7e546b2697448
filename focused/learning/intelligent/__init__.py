"""Aggarwal et al.'s intelligent crawling: the learned statistics (K) of interest ratios.

- ``knowledge``: Intelligent crawling (Aggarwal, Al-Garawi and Yu, WWW10 2001): the learned statistics K and the
  interest ratios.
"""
