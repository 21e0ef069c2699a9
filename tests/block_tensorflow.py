import importlib.abc, importlib.machinery, sys
BLOCKED = ("tensorflow", "tf_keras", "tensorflow_text")
class _Loader(importlib.abc.Loader):
  def create_module(self, spec):
    raise ModuleNotFoundError(f"No module named {spec.name!r} (blocked)", name=spec.name)
  def exec_module(self, module):
    raise AssertionError
class _Block(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in BLOCKED:
      return importlib.machinery.ModuleSpec(name, _Loader())
    return None
sys.meta_path.insert(0, _Block())
