"""The MCP package as a whole: what it exports, and how it fails without its extra."""

from __future__ import annotations

import subprocess
import sys

import perseus_vault_integrations.mcp as mcp_package


def test_exports_the_server_its_transports_and_the_client() -> None:
    assert mcp_package.__all__ == [
        "TOOLS_ENV",
        "VaultClient",
        "build_server",
        "http_app",
        "resolve_token",
        "serve_http",
        "serve_stdio",
        "served",
        "stdio_streams",
        "tool_size",
    ]


def test_without_the_extra_the_error_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n    import perseus_vault_integrations.mcp\nexcept ImportError as e:\n    print(e)\n    sys.exit(3)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    assert 'need mcp: pip install "perseus-vault[mcp]"' in result.stdout
