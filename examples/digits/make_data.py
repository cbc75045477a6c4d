"""Writes digits_train.csv and digits_test.csv: scikit-learn's 8×8 handwritten digits (1797
images from the UCI "Optical Recognition of Handwritten Digits" set, Alpaydin & Kaynak 1998,
CC BY 4.0), pixels X.1…X.64 (binding to `matrix[N, 64] X`) scaled from 0–16 to [0, 1], label y = digit + 1 (1…10, as Stan's
categorical counts), split 75/25 stratified by class with a fixed seed.
Run: pip install scikit-learn==1.9.1; python3 make_data.py
"""
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

d = load_digits()
X = d.data / 16.0
y = d.target + 1
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)

def write(path, X, y):
    with open(path, "w") as f:
        f.write(",".join(f"X.{j + 1}" for j in range(64)) + ",y\n")
        for row, c in zip(X, y):
            f.write(",".join(f"{v:.6g}" for v in row) + f",{int(c)}\n")

write("digits_train.csv", Xtr, ytr)
write("digits_test.csv", Xte, yte)
print(len(ytr), "train,", len(yte), "test")
