"""Stand-in for ansible-test's downloaded get-pip bootstrap script.

ansible-test sanity creates one virtualenv per sanity test without pip and
bootstraps pip with a get-pip script fetched from a host this machine cannot
reach. This stand-in does the same job with the standard library's ensurepip
and then installs the exact packages ansible-test asked for (from PyPI).
scripts/test.sh copies it into ansible-test's cache path.
"""
import subprocess
import sys

GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")
args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
# In a child process: ensurepip.bootstrap() would set PIP_CONFIG_FILE=/dev/null
# in this process and so hide the site's pip configuration (index, CA bundle).
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + args))
