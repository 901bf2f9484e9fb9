"""`pip install .` into a fresh virtual environment, then torch.compile(model, backend="kiln") with no
`import kiln`: the entry point, the wheel's layout (kiln/lib/libkiln.so found through the module's
RPATH, kiln/include for the kernels kiln generates at run time) and the build from pyproject.toml.

The fresh environment sees PyTorch and the build requirements (scikit-build-core, nanobind) of the
project's .venv through a .pth file, so the test needs no network (pip runs with
--no-build-isolation); kiln itself is installed into the fresh environment only. CTest runs this
file apart from the rest (kiln_python_install_test): the first run builds libkiln again in
build-wheel-<tag> (scikit-build-core's build directory, kept between runs), with the compile
commands of the build that runs the test, so that ccache serves most of them.
"""

import os
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent(
    """
    import sys
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    assert "kiln" not in sys.modules
    compiled = torch.compile(model, backend="kiln")
    with torch.no_grad():
        got = compiled(x)
        want = model(x)
    torch.testing.assert_close(got, want)
    import kiln, kiln.backend
    assert kiln.backend.stats["kiln_regions"] >= 1, kiln.backend.stats
    print("KILN_FILE", kiln.__file__)
    print("KILN_LIB", sorted(p.name for p in (__import__("pathlib").Path(kiln.__file__).parent / "lib").iterdir()))
    """
)


def test_pip_install_then_torch_compile(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site_packages = subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip()
    # PyTorch and the build requirements from the project's environment (this interpreter's).
    Path(site_packages, "project_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", str(REPO)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    out = subprocess.run([python, "-c", CHECK], check=True, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert f"KILN_FILE {site_packages}/kiln/__init__.py" in out.stdout, out.stdout
    assert "libkiln.so" in out.stdout, out.stdout
    assert Path(site_packages, "kiln", "include", "kiln", "core", "half.h").exists()
    # The README's first Python example, as a new user would paste it.
    readme = (REPO / "README.md").read_text()
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'backend="kiln"' in example
    subprocess.run([python, "-c", example], check=True, env=env, cwd=tmp_path, capture_output=True, text=True)
