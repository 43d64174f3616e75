"""Neural-network building blocks: Module, Parameter, layers, functional ops, initializers."""
from . import functional, init  # noqa: F401
from .module import Module, Parameter  # noqa: F401
from .layers import Linear, ReLU, GELU, Sequential  # noqa: F401
from .containers import ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .layers import Identity, Dropout, Embedding  # noqa: F401
from .activations import Tanh, Sigmoid, LeakyReLU, SiLU, Softmax  # noqa: F401
from .conv_layers import (Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, MaxPool1d, MaxPool2d,  # noqa: F401
                          AvgPool1d, AvgPool2d, AdaptiveAvgPool2d, Flatten)
from .norm import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm  # noqa: F401
from .recurrent import LSTM, GRU, LSTMCell, GRUCell  # noqa: F401
from .attention import MultiHeadAttention, TransformerEncoderLayer, TransformerEncoder  # noqa: F401
from .losses import CrossEntropyLoss, NLLLoss, MSELoss, BCEWithLogitsLoss  # noqa: F401
from . import losses  # noqa: F401
from . import state  # noqa: F401
from .state import save_state_dict, load_state_dict, load_metadata  # noqa: F401
from . import quant, lora  # noqa: F401,E402
from .lora import (LoRALinear, LoRAConv, LoRAEmbedding, NF4Linear, apply_lora, apply_qlora,  # noqa: F401,E402
                   merge_lora, lora_state_dict, save_lora, load_lora, lora_summary)
