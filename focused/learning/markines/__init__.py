"""Markines et al.'s link classifiers (SVM, naive Bayes, cosine) and their training data.

- ``classifiers``: Markines et al. (2004): binary word-presence classifiers of pages and of link contexts.
- ``data``: Training data of the Markines classifiers from crawl databases (their offline protocol).
"""
