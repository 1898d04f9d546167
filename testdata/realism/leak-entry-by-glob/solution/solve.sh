#!/bin/bash
echo fixed
