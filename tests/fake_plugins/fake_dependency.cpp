// A library a fake plugin depends on, standing in for a vendor runtime
// (libgomp, libcuda): it must stay loaded after the plugin is unloaded.
extern "C" __attribute__((visibility("default"))) int xhal_fake_dependency_value() { return 42; }
