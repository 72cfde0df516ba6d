"""The network's inputs."""

from netcompiler.layer_base import LayerBase, Option


class SourceLayer(LayerBase):
    """An entry of extern data ("data", "data:classes"), as the network gets it.

    Options: `data_key` (the extern_data key; default "data").
    """

    layer_class = "source"
    default_from = ()
    options = {"data_key": Option("data", (str,))}

    def make_output(self):
        key = self.opts["data_key"]
        extern = self.network.extern_data
        if key not in extern:
            raise self.error(f"extern_data has no key '{key}'", option="data_key",
                             suggestion=f"keys: {', '.join(extern)}")
        return extern[key].copy(name=self.name)

    def emit(self, inputs):
        return inputs.extern(self.opts["data_key"])
