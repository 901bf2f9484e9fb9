"""The model architectures exported by export_models.py, written for kiln's fixtures.

Small models (an MLP, a CNN, a GPT block); torchvision's resnet18 and mobilenet_v3_small
architectures, defined here because torchvision is not installed beside the pinned torch (structure,
channel counts and initialization follow torchvision's definitions); and wrappers that build Hugging
Face transformers models (GPT-2, BERT, ViT) from small configs with random weights and return their
outputs as tuples of tensors. Nothing is downloaded.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


# --------------------------------------------------------------------------------------------------
# Small models written here.


class Mlp(nn.Module):
    """Linear-ReLU-Linear."""

    def __init__(self, d_in: int = 16, d_hidden: int = 32, d_out: int = 8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Cnn(nn.Module):
    """conv -> batch norm -> ReLU -> max_pool2d -> flatten -> linear."""

    def __init__(self, channels: int = 8, size: int = 16, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.fc = nn.Linear(channels * (size // 2) ** 2, classes)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


class GptBlock(nn.Module):
    """A pre-norm GPT block: x + attn(ln1(x)), then + mlp(ln2(x)); causal scaled_dot_product_attention
    and a tanh-approximated GELU, as GPT-2 has."""

    def __init__(self, d_model: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


# --------------------------------------------------------------------------------------------------
# resnet18, as torchvision defines it (BasicBlock, layers [2, 2, 2, 2]).


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm; the identity (or a strided 1x1 conv + batch norm where
    the shape changes) is added before the last ReLU."""

    def __init__(self, inplanes: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        inplanes = 64
        for i, (planes, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)]):
            blocks = [BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes, 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        # torchvision's initialization.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------------------------------
# mobilenet_v3_small, as torchvision defines it.


def make_divisible(v: float, divisor: int = 8) -> int:
    """Rounds a channel count to a multiple of `divisor`, never down by more than 10%."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def bn_mobilenet(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=0.001, momentum=0.01)


class ConvBnAct(nn.Sequential):
    """Conv2d (no bias) + BatchNorm2d + an optional activation; 'same' padding for odd kernels."""

    def __init__(self, cin, cout, kernel, stride=1, groups=1, activation: type[nn.Module] | None = nn.ReLU):
        layers = [
            nn.Conv2d(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups, bias=False),
            bn_mobilenet(cout),
        ]
        if activation is not None:
            layers.append(activation(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    """x * hardsigmoid(fc2(relu(fc1(avgpool(x))))), the fc layers being 1x1 convolutions."""

    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x):
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


class InvertedResidual(nn.Module):
    """Expand (1x1, skipped when the width stays), depthwise kxk, optional squeeze-excitation,
    project (1x1, no activation); the input is added back when stride is 1 and widths match."""

    def __init__(self, cin, kernel, expanded, cout, use_se, activation, stride):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(ConvBnAct(cin, expanded, 1, activation=activation))
        layers.append(ConvBnAct(expanded, expanded, kernel, stride=stride, groups=expanded, activation=activation))
        if use_se:
            layers.append(SqueezeExcitation(expanded, make_divisible(expanded // 4)))
        layers.append(ConvBnAct(expanded, cout, 1, activation=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        result = self.block(x)
        if self.use_res_connect:
            result += x
        return result


class MobileNetV3Small(nn.Module):
    # (input channels, kernel, expanded channels, output channels, squeeze-excitation, activation, stride)
    SETTING = [
        (16, 3, 16, 16, True, "RE", 2),
        (16, 3, 72, 24, False, "RE", 2),
        (24, 3, 88, 24, False, "RE", 1),
        (24, 5, 96, 40, True, "HS", 2),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 120, 48, True, "HS", 1),
        (48, 5, 144, 48, True, "HS", 1),
        (48, 5, 288, 96, True, "HS", 2),
        (96, 5, 576, 96, True, "HS", 1),
        (96, 5, 576, 96, True, "HS", 1),
    ]

    def __init__(self, num_classes: int = 1000, last_channel: int = 1024):
        super().__init__()
        layers: list[nn.Module] = [ConvBnAct(3, 16, 3, stride=2, activation=nn.Hardswish)]
        for cin, k, exp, cout, se, act, stride in self.SETTING:
            activation = nn.Hardswish if act == "HS" else nn.ReLU
            layers.append(InvertedResidual(cin, k, exp, cout, se, activation, stride))
        last_in = self.SETTING[-1][3]
        layers.append(ConvBnAct(last_in, 6 * last_in, 1, activation=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(6 * last_in, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=0.2, inplace=True),
            nn.Linear(last_channel, num_classes),
        )
        # torchvision's initialization.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


# --------------------------------------------------------------------------------------------------
# Hugging Face models, built from small configs with random weights, returning plain tensors.


class Gpt2Logits(nn.Module):
    """GPT2LMHeadModel (token embedding tied to the LM head) returning (logits,)."""

    def __init__(self, config):
        super().__init__()
        from transformers import GPT2LMHeadModel

        self.model = GPT2LMHeadModel(config)

    def forward(self, input_ids):
        return (self.model(input_ids=input_ids, use_cache=False, return_dict=True).logits,)


class BertOutputs(nn.Module):
    """BertModel returning (last_hidden_state, pooler_output)."""

    def __init__(self, config):
        super().__init__()
        from transformers import BertModel

        self.model = BertModel(config)

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, return_dict=True)
        return out.last_hidden_state, out.pooler_output


class VitOutputs(nn.Module):
    """ViTModel returning (last_hidden_state, pooler_output)."""

    def __init__(self, config):
        super().__init__()
        from transformers import ViTModel

        self.model = ViTModel(config)

    def forward(self, pixel_values):
        out = self.model(pixel_values=pixel_values, return_dict=True)
        return out.last_hidden_state, out.pooler_output


def hf_gpt2():
    from transformers import GPT2Config

    config = GPT2Config(
        vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4, use_cache=False, bos_token_id=0,
        eos_token_id=0,
    )
    return Gpt2Logits(config), (torch.randint(0, config.vocab_size, (1, 16)),)


def hf_bert():
    from transformers import BertConfig

    config = BertConfig(
        vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64,
    )
    input_ids = torch.randint(0, config.vocab_size, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.int64)
    attention_mask[1, 12:] = 0  # the second sequence is padded
    return BertOutputs(config), (input_ids, attention_mask)


def hf_vit():
    from transformers import ViTConfig

    config = ViTConfig(
        image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128,
    )
    return VitOutputs(config), (torch.randn(1, 3, 32, 32),)
