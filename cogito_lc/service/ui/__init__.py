"""The memory inspector: a web page at ``/ui`` served by the memory service itself.

See :mod:`cogito_lc.service.ui.routes`; :func:`mount_ui` adds it to the app
(``create_app`` does unless ``ui`` is off in the settings).
"""

from cogito_lc.service.ui.routes import CONTENT_SECURITY_POLICY, PREFIX, mount_ui

__all__ = ["CONTENT_SECURITY_POLICY", "PREFIX", "mount_ui"]
