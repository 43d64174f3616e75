"""ModuleList / ModuleDict / ParameterList / ParameterDict and Sequential indexing (issue 17 part 3)."""
import os

import numpy as np
import pytest

import burn
from burn import nn

AD = burn.Device.flex().autodiff()


class _ListMLP(nn.Module):
    def __init__(self, sizes, device=None):
        self.layers = nn.ModuleList([nn.Linear(a, b, device=device) for a, b in zip(sizes[:-1], sizes[1:])])
        self.gains = nn.ParameterList([burn.ones((b,), device=device) for b in sizes[1:]])

    def forward(self, x):
        for i, (layer, g) in enumerate(zip(self.layers, self.gains)):
            x = layer(x) * g
            if i < len(self.layers) - 1:
                x = nn.functional.relu(x)
        return x


def test_containers_register_paths_state_and_devices(tmp_path):
    m = _ListMLP((3, 4, 2))
    names = [n for n, _ in m.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "gains.0", "gains.1"]
    assert set(m.state_dict()) == set(names)
    path = os.path.join(tmp_path, "m.safetensors")
    m.gains[1].assign_(burn.tensor([2.0, 3.0]))
    m.save(path)
    other = _ListMLP((3, 4, 2)).load(path)
    assert other.gains[1].tolist() == [2.0, 3.0]
    assert np.array_equal(other.layers[0].weight.numpy(), m.layers[0].weight.numpy())
    m.to_device(AD)
    assert all(p.requires_grad for p in m.parameters()) and m.gains[0].device.is_autodiff


def test_module_list_behaves_as_a_list():
    ml = nn.ModuleList([nn.ReLU(), nn.Identity()])
    ml.append(nn.Linear(2, 2))
    ml.extend([nn.GELU()])
    ml.insert(1, nn.SiLU())
    assert [type(x).__name__ for x in ml] == ["ReLU", "SiLU", "Identity", "Linear", "GELU"]
    assert len(ml) == 5 and isinstance(ml[-2], nn.Linear) and isinstance(ml[1:3], nn.ModuleList)
    assert [type(x).__name__ for x in ml[1:3]] == ["SiLU", "Identity"]
    ml[0] = nn.Identity()
    del ml[1]
    assert [type(x).__name__ for x in ml] == ["Identity", "Identity", "Linear", "GELU"]
    assert [n for n, _ in ml.named_parameters()] == ["2.weight", "2.bias"]
    with pytest.raises(IndexError, match="index 9 is out of range for length 4"):
        ml[9]
    with pytest.raises(TypeError, match="ModuleList holds modules"):
        ml.append(burn.ones((2,)))


def test_dicts_keep_insertion_order_and_check_keys():
    d = nn.ModuleDict({"b": nn.Linear(2, 1), "a": nn.ReLU()})
    assert d.keys() == ["b", "a"] and list(d) == ["b", "a"] and "a" in d and len(d) == 2
    assert [k for k, _ in d.items()] == ["b", "a"] and [n for n, _ in d.named_parameters()] == ["b.weight", "b.bias"]
    d["c"] = nn.Linear(1, 1)
    assert isinstance(d.pop("b"), nn.Linear) and d.keys() == ["a", "c"]
    with pytest.raises(burn.BurnError, match="'x.y'"):
        d["x.y"] = nn.ReLU()
    pd = nn.ParameterDict({"w": burn.zeros((2,))})
    pd["s"] = nn.Parameter(burn.ones(()))
    assert isinstance(pd["w"], nn.Parameter) and [n for n, _ in pd.named_parameters()] == ["w", "s"]
    with pytest.raises(TypeError, match="ParameterDict holds parameters"):
        pd["z"] = nn.ReLU()


def test_plain_containers_of_parameters_or_modules_are_rejected():
    class ListOfParams(nn.Module):
        def __init__(self):
            self.ws = [nn.Parameter(burn.ones((2,)))]

    with pytest.raises(burn.BurnError, match=r"ListOfParams\.ws: a plain list holding Parameters.*ParameterList"):
        ListOfParams()

    class DictOfModules(nn.Module):
        def __init__(self):
            self.heads = {"a": nn.Linear(2, 2)}

    with pytest.raises(burn.BurnError, match=r"DictOfModules\.heads: a plain dict holding Modules.*ModuleDict"):
        DictOfModules()

    class FilledLater(nn.Module):
        def __init__(self):
            self.ws = []

    m = FilledLater()
    m.ws.append(nn.Parameter(burn.ones((2,))))     # past __setattr__: discovery refuses it instead of dropping it
    with pytest.raises(burn.BurnError, match="ParameterList"):
        m.parameters()

    class Config(nn.Module):
        def __init__(self):
            self.sizes = [3, 4]
            self.opts = {"act": "relu"}

    assert Config().parameters() == []


def test_sequential_len_indexing_and_slicing():
    s = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert len(s) == 3 and s[0] is s.layers[0] and s[-1].d_out == 2
    head = s[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is s[0]
    x = burn.ones((5, 3))
    assert np.allclose(s[2](head(x)).numpy(), s(x).numpy())
    assert [type(m).__name__ for m in s] == ["Linear", "ReLU", "Linear"]
    assert "(layers.2): Linear(d_in=4, d_out=2, bias=True)" in repr(s)


def test_module_list_mlp_matches_torch_output_and_one_sgd_step():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    sizes = (5, 7, 3)
    m = _ListMLP(sizes, device=AD)
    tl = torch.nn.ModuleList([torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
    tg = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(b)) for b in sizes[1:]])
    with torch.no_grad():
        for i, (lin, tlin) in enumerate(zip(m.layers, tl)):
            w = rng.standard_normal(tlin.weight.shape).astype(np.float32)
            b = rng.standard_normal(tlin.bias.shape).astype(np.float32)
            tlin.weight.copy_(torch.tensor(w))
            tlin.bias.copy_(torch.tensor(b))
            lin.weight.assign_(burn.tensor(w.T.copy(), device=AD))
            lin.bias.assign_(burn.tensor(b, device=AD))
            g = rng.standard_normal(sizes[i + 1]).astype(np.float32)
            tg[i].copy_(torch.tensor(g))
            m.gains[i].assign_(burn.tensor(g, device=AD))
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = rng.integers(0, 3, 4)

    def tforward(t):
        for i, (lin, g) in enumerate(zip(tl, tg)):
            t = lin(t) * g
            if i < len(tl) - 1:
                t = torch.relu(t)
        return t

    out = m(burn.tensor(x, device=AD))
    np.testing.assert_allclose(out.numpy(), tforward(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    opt = burn.optim.SGD(m, lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(list(tl.parameters()) + list(tg.parameters()), lr=0.1, momentum=0.9)
    loss = nn.functional.cross_entropy(out, burn.tensor(y, device=AD))
    opt.step(loss.backward())
    topt.zero_grad()
    torch.nn.functional.cross_entropy(tforward(torch.tensor(x)), torch.tensor(y)).backward()
    topt.step()
    for i in range(2):
        np.testing.assert_allclose(m.layers[i].weight.numpy(), tl[i].weight.detach().numpy().T, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.gains[i].numpy(), tg[i].detach().numpy(), rtol=1e-5, atol=1e-6)
