"""How cwread sets up llama.cpp in-process: what depends on the machine it runs on."""

import enum

from cwread.backends import llama_server


class _Devices:
    """Stands in for xllamacpp's device listing (which devices llama.cpp sees)."""

    class ggml_backend_dev_type(enum.IntEnum):  # xllamacpp's name
        GGML_BACKEND_DEVICE_TYPE_CPU = 0
        GGML_BACKEND_DEVICE_TYPE_GPU = 1
        GGML_BACKEND_DEVICE_TYPE_IGPU = 2
        GGML_BACKEND_DEVICE_TYPE_ACCEL = 3

    def __init__(self, *kinds: int | None) -> None:
        self.kinds = kinds

    def get_device_info(self) -> list[dict]:
        if None in self.kinds:
            raise RuntimeError("no device list in this build")
        return [{"name": f"dev{i}", "type": self.ggml_backend_dev_type(k)} for i, k in enumerate(self.kinds)]


def test_llama_cpp_sizes_layers_to_free_memory_only_where_a_gpu_is_seen():
    """fit_params probes a GPU's free memory with a trial load: off on a CPU alone (0.15 s of a
    0.45 s load with the GIL held), on with a GPU, and llama.cpp's default where it cannot say."""
    assert not llama_server.has_gpu(_Devices(0))
    assert not llama_server.has_gpu(_Devices(0, 3))  # an accelerator (BLAS, AMX) holds no layers
    assert llama_server.has_gpu(_Devices(0, 1))
    assert llama_server.has_gpu(_Devices(2))
    assert llama_server.has_gpu(_Devices(None))


def test_the_device_listing_of_the_installed_llama_cpp_is_read():
    """Against the xllamacpp installed: its device list is read (not the fallback of a build
    that has none, which would keep the trial load on a CPU)."""
    import xllamacpp

    devices = xllamacpp.get_device_info()
    assert devices
    seen = {device["type"].name for device in devices}
    assert llama_server.has_gpu(xllamacpp) == bool(seen & {"GGML_BACKEND_DEVICE_TYPE_GPU", "GGML_BACKEND_DEVICE_TYPE_IGPU"})
