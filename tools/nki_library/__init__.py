"""The survey of AWS's public current-NKI kernels (aws-neuron/nki-library and a few other
public collections) and their build into accelopt task folders outside the repository: see
README.md. Modules: sources (where the checkouts' kernel files are), apis (counting the NKI API),
survey, flatten, build_tasks, run; references/ is data (NumPy references and task tables)."""
