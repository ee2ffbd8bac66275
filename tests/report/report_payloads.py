"""Hostile strings planted in document texts, answers, questions, judge reasons and run names."""

XSS = '<script>document.title="PWNED";document.documentElement.setAttribute("data-pwned","1")</script>'
IMG_XSS = (
    "<img src=x onerror=\"document.title='PWNED2';document.documentElement.setAttribute('data-pwned','2')\">"
)
