"""``python -m burn_onnx.importer``: print the imported-operator table of docs/onnx.md."""
from burn_onnx.importer.registry import operator_table

print(operator_table())
