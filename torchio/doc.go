// Package torchio moves tensors between PyTorch and mhalab: it reads and writes safetensors files
// (the format of `safetensors.torch.save_file(module.state_dict(), path)`) and loads an
// nn.MultiheadAttention state_dict into mhalib's variables, with PyTorch's names.
//
// # Files
//
// ReadFile / Parse return a File: host tensors by name, their order in the file and the string
// metadata. Write / WriteFile store tensors the same way. Parsing survives corrupt input: a bad header
// length, truncated data or an unknown dtype is an error, and the memory allocated for tensors never
// exceeds the file's size (the parser is fuzzed: FuzzParse).
//
// # State dicts
//
// LoadMHA sets the variables of an mhalib.MultiHeadAttention scope from a state_dict with the names
// nn.MultiheadAttention uses, and InferMHA reads the module's configuration (embed_dim, kdim, vdim,
// bias, add_bias_kv) off those names and shapes. The names and their checks are mhalib's
// (mhalib.StateDictKeys, mhalib.InferStateDict, mhalib.LoadStateDict): torchio only adds files.
//
// torchio imports mhalib and GoMLX; mhalib does not import torchio.
package torchio
