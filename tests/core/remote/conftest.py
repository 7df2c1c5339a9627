"""A real OpenSSH server on 127.0.0.1 for this folder's tests (tests/sshd_server.py), one per test module;
each test gets its own remote root (PTPROF_REMOTE_ROOT) so runs never mix."""
import sshd_server

sshd = sshd_server.sshd_fixture
remote_root = sshd_server.remote_root_fixture
